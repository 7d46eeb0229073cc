/// A CTAP2 command byte, the first byte of every request (CTAP 2.1 §6 "Authenticator API").
///
/// Each command's byte is declared beside its handler (`Commands/<Area>/`), and its name is the
/// name of the handler registered for it (``VirtualKey/CommandHandler``).
public struct CTAPCommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public var description: String {
        VirtualKey.CommandHandler.registered(for: self)?.name ?? "command(0x\(String(rawValue, radix: 16)))"
    }
}
