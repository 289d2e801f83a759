"""Records: the delivery log's lines, the state journal's lines, diagnostics, the event stream."""
