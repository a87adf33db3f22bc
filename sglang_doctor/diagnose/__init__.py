"""Stage 3, diagnose: takes an Incident and its Launch and gives a Diagnosis (rule id,
category, phase, explanation, confidence) from the YAML rule pack, or the honest fallback."""
