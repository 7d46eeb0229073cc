// The CTAP2 module. See Docs/Architecture.md for what belongs here.
