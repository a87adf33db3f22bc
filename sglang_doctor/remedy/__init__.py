"""Stage 4, remedy: takes a Diagnosis and gives a Remediation: named operations turned into
flag changes validated against the target SGLang release's catalogue, sized by the planner."""
