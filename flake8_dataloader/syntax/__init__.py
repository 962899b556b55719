"""The LibCST side: a parse that cannot crash, hang or exhaust the stack (`parsing.py`), and the
line and column of the nodes a finding names (`positions.py`, placed through flake8's ast where
a call is unique: `ast_positions.py`).
"""
