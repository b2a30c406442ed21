"""The targets of a certify run: what each declares (profiles), as planned, as live."""
