"""Stage 1, read: takes bytes (a file, a pipe, a followed or rotated log, a child's output)
and gives Lines (never cut, numbered) with their parsed prefix (timestamp, ranks)."""
