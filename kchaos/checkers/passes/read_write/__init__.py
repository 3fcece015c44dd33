"""The passes over read-write transactions (issue 49): what each transaction read (`transaction_reads`),
what one did inside itself (`internal_passes`), and the dependency graph between them
(`dependency_edges`). Apart from the other passes because they apply only to histories whose transactions
read, and share what those reads are.
"""
