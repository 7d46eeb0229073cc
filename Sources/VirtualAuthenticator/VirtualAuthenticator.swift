// The VirtualAuthenticator module. See Docs/Architecture.md for what belongs here.
