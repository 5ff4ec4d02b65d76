"""Setup-time tools (weight converters), run once from run.sh; never imported at run time."""
