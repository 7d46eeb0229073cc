// The ISO7816 module. See Docs/Architecture.md for what belongs here.
