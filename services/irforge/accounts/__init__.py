"""Who may do what on a shared platform: teams and operators, their tokens or client
certificates, and the audit log of what each did."""
