"""Pure image helpers shared by the services (arrays and bytes in, arrays and bytes out, no I/O)."""
