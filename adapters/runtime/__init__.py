"""The runtime loop: turns, pre-steps and the pending-choice flush, runtime-owned
tools, the review port and the goal service; where a call's writes land
(``resolve``) and planfold's own shell executor (``shell_executor``).
"""
