"""Stage 5c, export: takes the same events the report prints and gives them to a fleet's
pipeline: OpenTelemetry-shaped JSON fields, and Prometheus metrics on /metrics."""
