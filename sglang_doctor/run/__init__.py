"""Stage 5b, relaunch: takes a launch command and the diagnoses of its log and gives a
supervised server: child processes, health checks, relaunches with remedies, the history."""
