"""τ³ domains; each package registers its `DomainSpec` when imported (see ../domain.py)."""
