"""What needs benchmark data: the emulator, provisioning, the `tau ces` commands."""
