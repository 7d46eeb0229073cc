import Logging
import Transport

/// Finds PC/SC readers and opens the FIDO applet on the card in one.
///
/// Device URIs are `pcsc:<reader name>` or `pcsc:<index>`, the index counting readers in the
/// order ``devices()`` lists them.
public struct PCSCDiscovery: DeviceDiscovery {
    public var scheme: String { "pcsc" }
    /// Settings for the connections ``open(uri:)`` makes.
    public var options: PCSCConnection.Options
    let logger: Logger

    /// Creates a discovery.
    public init(options: PCSCConnection.Options = .init(), logger: Logger = Logger(label: "securitykey.pcsc"))
    {
        self.options = options
        self.logger = logger
    }

    /// Lists every reader pcscd knows, with or without a card; no pcscd means no devices.
    public func devices() async throws(TransportError) -> [DeviceDescriptor] {
        let names: [String]
        do { names = try await Self.readerNames() } catch  where error.code == .noDevice {
            logger.debug("no PC/SC readers", metadata: ["reason": "\(error.message)"])
            return []
        }
        return names.map { DeviceDescriptor(uri: "pcsc:\($0)", transport: .nfc, product: $0) }
    }

    /// Opens the card in the reader the URI names.
    public func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection {
        try await connect(uri: uri)
    }

    /// Opens the card in the reader the URI names, waiting at most until `deadline` while
    /// another application holds it in a PC/SC transaction.
    public func open(uri: String, deadline: Deadline) async throws(TransportError) -> any AuthenticatorConnection {
        try await connect(uri: uri, deadline: deadline)
    }

    /// Opens the card in the reader the URI names, as the concrete type; waits at most
    /// ``PCSCConnection/Options/connectTimeout`` (or until `deadline`, when given) while
    /// another application holds the card.
    public func connect(uri: String, deadline: Deadline? = nil) async throws(TransportError) -> PCSCConnection {
        let target = try PCSCDeviceURI(uri)
        let reader: String
        switch target {
        case .name(let name):
            reader = name
        case .index(let index):
            let names = try await Self.readerNames()
            guard names.indices.contains(index) else {
                throw TransportError(
                    .noDevice, "There is no PC/SC reader number \(index) (\(names.count) connected).")
            }
            reader = names[index]
        }
        return try await PCSCConnection.open(reader: reader, options: options, deadline: deadline, logger: logger)
    }

    /// The reader names pcscd lists now.
    public static func readerNames() async throws(TransportError) -> [String] {
        let context = try await PCSCContext.establish(name: "pcsc-list")
        let names: [String]
        do {
            names = try await context.thread.run { () throws(TransportError) in try context.listReaders() }
        } catch {
            await context.release()
            throw error
        }
        await context.release()
        return names
    }
}

/// What a `pcsc:` URI names: a reader by name or by position.
public enum PCSCDeviceURI: Hashable, Sendable {
    /// The reader with this exact name.
    case name(String)
    /// The reader at this position in the reader list.
    case index(Int)

    /// Parses `pcsc:<reader name>` or `pcsc:<index>`.
    public init(_ uri: String) throws(TransportError) {
        let prefix = "pcsc:"
        guard uri.hasPrefix(prefix) else {
            throw TransportError(.invalidURI, "\"\(uri)\" is not a pcsc: device URI.")
        }
        let rest = String(uri.dropFirst(prefix.count))
        guard !rest.isEmpty else {
            throw TransportError(.invalidURI, "The pcsc: URI names no reader.")
        }
        if rest.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard rest.count <= 6, let index = Int(rest) else {
                throw TransportError(.invalidURI, "The reader number in \"\(uri)\" is too large.")
            }
            self = .index(index)
        } else {
            self = .name(rest)
        }
    }
}
