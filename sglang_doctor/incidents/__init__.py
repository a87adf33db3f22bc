"""Stage 2, incidents: takes Lines and gives Launches (the server_args dump, milestones) and
Incidents (whole tracebacks of every rank, signals, the sigquit that follows them)."""
