"""Local stack runner: the five services, the simulators and their stores as processes on this machine.

Used by ``make demo`` / ``make up`` and by the end-to-end tests; nothing here runs in production.
"""
