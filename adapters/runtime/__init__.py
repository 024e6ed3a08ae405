"""The runtime loop: turns, pre-steps and the pending-choice flush, runtime-owned
tools, the review port and the goal service.
"""
