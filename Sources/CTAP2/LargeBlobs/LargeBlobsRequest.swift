import CBOR

/// The parameters of authenticatorLargeBlobs (CTAP 2.1 §6.10.2, parameter table): either
/// `get` (read up to that many bytes at `offset`) or `set` (write a fragment at `offset`;
/// the first fragment also gives the total `length`).
public struct LargeBlobsRequest: CTAP2Request, Hashable {
    /// The CBOR keys of the request.
    public enum Key {
        /// get (0x01): how many bytes to read.
        public static let get: CBORValue = 0x01
        /// set (0x02): the fragment to write.
        public static let set: CBORValue = 0x02
        /// offset (0x03).
        public static let offset: CBORValue = 0x03
        /// length (0x04): the total length of what is written, on the first fragment only.
        public static let length: CBORValue = 0x04
        /// pinUvAuthParam (0x05).
        public static let pinUVAuthParam: CBORValue = 0x05
        /// pinUvAuthProtocol (0x06).
        public static let pinUVAuthProtocol: CBORValue = 0x06
    }

    /// How many bytes to read, for a read.
    public var get: UInt64?
    /// The fragment, for a write.
    public var set: [UInt8]?
    /// Where the read or the fragment starts.
    public var offset: UInt64
    /// The total length, on the first fragment of a write.
    public var length: UInt64?
    /// The pinUvAuthParam of a write.
    public var pinUVAuthParam: [UInt8]?
    /// The PIN/UV auth protocol version of the token.
    public var pinUVAuthProtocol: UInt64?

    /// Creates a request from its members as they are sent; ``validate()`` checks the shape.
    public init(
        get: UInt64? = nil, set: [UInt8]? = nil, offset: UInt64, length: UInt64? = nil,
        pinUVAuthParam: [UInt8]? = nil, pinUVAuthProtocol: UInt64? = nil
    ) {
        self.get = get
        self.set = set
        self.offset = offset
        self.length = length
        self.pinUVAuthParam = pinUVAuthParam
        self.pinUVAuthProtocol = pinUVAuthProtocol
    }

    /// Reads up to `count` bytes at `offset`.
    public static func get(offset: Int, count: Int) -> LargeBlobsRequest {
        LargeBlobsRequest(get: UInt64(max(count, 0)), offset: UInt64(max(offset, 0)))
    }

    /// Writes `fragment` at `offset`; `length` is the total, given with the first fragment
    /// (offset 0) only. With a token, pinUvAuthParam is authenticate(token, 32×0xff ‖ h'0c00' ‖
    /// uint32LE(offset) ‖ SHA-256(fragment)) and the token must carry `lbw`.
    public static func set(
        fragment: [UInt8], offset: Int, length: Int?, token: PINUVAuthToken?
    ) throws(CTAP2Error) -> LargeBlobsRequest {
        guard offset >= 0, offset <= Int(UInt32.max) else {
            throw .invalidRequest("A large-blob offset is a 32-bit number, not \(offset).")
        }
        var request = LargeBlobsRequest(
            set: fragment, offset: UInt64(offset), length: length.map { UInt64(max($0, 0)) })
        if let token { try request.authorize(with: token) }
        return request
    }

    /// The command byte, authenticatorLargeBlobs (0x0C).
    public var command: CTAP2Command { .largeBlobs }

    /// The request's parameter map; absent members are omitted.
    public var parameters: CBORMap? {
        var m = CBORMap()
        if let get { m[Key.get] = .unsigned(get) }
        if let set { m[Key.set] = .byteString(set) }
        m[Key.offset] = .unsigned(offset)
        if let length { m[Key.length] = .unsigned(length) }
        if let pinUVAuthParam { m[Key.pinUVAuthParam] = .byteString(pinUVAuthParam) }
        if let pinUVAuthProtocol { m[Key.pinUVAuthProtocol] = .unsigned(pinUVAuthProtocol) }
        return m
    }

    /// Refuses a request that is neither a read nor a write, or both, or a length on a later
    /// fragment (§6.10.2 steps 2–4).
    public func validate() throws(CTAP2Error) {
        guard (get == nil) != (set == nil) else {
            throw .invalidRequest("A largeBlobs request either reads (get) or writes (set).")
        }
        if get != nil, length != nil {
            throw .invalidRequest("A largeBlobs read takes no length.")
        }
        if set != nil, (offset == 0) != (length != nil) {
            throw .invalidRequest("A largeBlobs write gives its length with the first fragment, and only there.")
        }
    }

    /// The decoded reply.
    public typealias Response = LargeBlobsResponse
}

/// The authenticatorLargeBlobs response (CTAP 2.1 §6.10.2): the bytes read, or nothing for a
/// write.
public struct LargeBlobsResponse: CTAP2Response, Hashable {
    /// The CBOR keys of the response.
    public enum Key {
        /// config (0x01): the bytes read.
        public static let config: CBORValue = 0x01
    }

    /// The bytes read (nil for a write).
    public var config: [UInt8]?

    /// Parses the body of a successful reply; an empty body (a write) gives no config.
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        if bytes.isEmpty { return }
        let map = try ResponseDecoding.decodeMap(bytes, what: "largeBlobs response")
        config = try FieldReader(map, "largeBlobs response").bytes(Key.config, "config")
    }
}

extension CTAP2Command {
    /// authenticatorLargeBlobs (§6.10).
    public static let largeBlobs = CTAP2Command(0x0C, name: "authenticatorLargeBlobs")
}
