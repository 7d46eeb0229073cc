/// A CTAP2 command byte (CTAP 2.1 §6 "Authenticator API", command table in §6).
///
/// Each command's byte and name are declared in its own folder, beside its request type
/// (`extension CTAP2Command { public static let … }`); a command read off the wire
/// (``init(rawValue:)``) takes its name from ``known``.
public struct CTAP2Command: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The command byte.
    public let rawValue: UInt8
    /// The name, a static string so that a command stays a plain value to copy.
    private let staticName: StaticString?

    /// A command declared by its folder: its byte and the specification's name.
    public init(_ rawValue: UInt8, name: StaticString) {
        self.rawValue = rawValue
        self.staticName = name
    }

    /// Creates a command from its byte, named when it is one of ``known``.
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
        self.staticName = Self.names[Int(rawValue)]
    }

    /// The specification's name (`authenticatorMakeCredential`), if the command is known.
    public var name: String? { staticName.map { "\($0)" } }

    /// The commands this library sends, so that a byte read off the wire (a capture, a log)
    /// gets its name. Each is declared in its command's folder.
    public static let known: [CTAP2Command] = [
        .makeCredential, .getAssertion, .getInfo, .clientPIN, .reset, .getNextAssertion, .bioEnrollment,
        .credentialManagement, .selection, .largeBlobs, .config, .bioEnrollmentPreview,
        .credentialManagementPreview,
    ]

    /// ``known``'s names indexed by command byte.
    private static let names: [StaticString?] = {
        var names = [StaticString?](repeating: nil, count: 256)
        for command in known { names[Int(command.rawValue)] = command.staticName }
        return names
    }()

    /// Commands are the same when their bytes are.
    public static func == (lhs: CTAP2Command, rhs: CTAP2Command) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    public var description: String { name ?? "command(0x\(String(rawValue, radix: 16)))" }
}
