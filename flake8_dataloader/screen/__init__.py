"""The screen: may this file hold a finding of the selected rules? Decided before LibCST is imported.

`decide.may_find` is the one entry point: the rules' tokens in the text (`tokens.py`), then on
flake8's ast whether some selected rule's condition holds (`gate.py` over the one walk of
`ast_walk.py`, with `gate_values.py` and `gate_names.py`); a file without the tokens passes only
when it may use a loader its project builds (the project index, `project/service.py`).
"""
