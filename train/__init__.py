"""Training scripts and their data: the toy French->English translation task."""
