"""`planfold report`: a session (or a database) as one self-contained HTML page for auditors."""
