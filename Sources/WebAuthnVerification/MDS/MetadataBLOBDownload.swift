import CCurl
import FoundationEssentials
import Synchronization
import _SecurityKeyInternals

/// Downloads a metadata BLOB (FIDO MDS3 §3.1.7) over HTTP(S) with libcurl, with an overall
/// deadline and a size cap that stops the transfer as soon as it is exceeded. The bytes are
/// not verified here: hand them to ``MetadataBLOBVerifier`` and store them with ``MetadataCache``.
///
/// libcurl rather than Foundation's `URLSession`, which lives in FoundationNetworking and brings
/// full Foundation and its ICU data into every binary that links this module; and loaded when the
/// first download starts (`dlopen` of libcurl.so.4), not at every start of those binaries.
public enum MetadataBLOBDownload {
    /// Where FIDO publishes the BLOB.
    public static let defaultURL = "https://mds3.fidoalliance.org/"

    /// The body at `text` (an http or https URL): at most `limit` bytes, within `timeout` seconds.
    /// Redirects are followed (to http or https only); the final answer must be HTTP 200.
    /// `subject` names what is fetched in messages ("the BLOB", "the CRL").
    public static func get(
        _ text: String, limit: Int, timeout: TimeInterval, subject: String = "the BLOB"
    ) async throws -> [UInt8] {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { throw WebAuthnVerificationError(.metadataURLInvalid, "\(text) is not an http or https URL.") }
        let transfer = Transfer(limit: limit, subject: subject)
        let milliseconds = max(1, Int(min(timeout, 86_400) * 1000))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
                // curl_easy_perform blocks: on a thread of its own, never a cooperative one.
                let started = OSThread.detach(name: "mds download") {
                    continuation.resume(with: transfer.perform(url: text, milliseconds: milliseconds))
                }
                if !started {
                    continuation.resume(
                        throwing: WebAuthnVerificationError(.metadataNetwork, "Cannot start the download thread."))
                }
            }
        } onCancel: {
            transfer.cancelled.store(true, ordering: .relaxed)
        }
    }

    /// libcurl, loaded and `curl_global_init`ed once per process before the first handle; or
    /// why it could not be.
    // Written once by the lazy initializer and only read afterwards (the pointer's target too).
    nonisolated(unsafe) private static let library: Result<UnsafePointer<securitykey_curl_api>, WebAuthnVerificationError> = {
        // Kept for the life of the process, as the library stays loaded.
        let api = UnsafeMutablePointer<securitykey_curl_api>.allocate(capacity: 1)
        api.initialize(to: securitykey_curl_api())
        guard securitykey_curl_load(api) != 0 else {
            let reason = securitykey_curl_load_error().map { String(cString: $0) } ?? "not found"
            return .failure(
                WebAuthnVerificationError(.metadataNetwork, "Cannot download: libcurl cannot be loaded (\(reason))."))
        }
        let code = securitykey_curl_global_init(api, Int(CURL_GLOBAL_DEFAULT))
        guard code == CURLE_OK else {
            return .failure(
                WebAuthnVerificationError(.metadataNetwork, "Cannot download: libcurl did not start (error \(code.rawValue))."))
        }
        return .success(UnsafePointer(api))
    }()

    /// One transfer's state, shared with libcurl's callbacks on the download thread.
    final class Transfer: @unchecked Sendable {
        let limit: Int
        /// What is fetched, for messages.
        let subject: String
        /// Set by the calling task's cancellation; the progress callback then aborts the transfer.
        let cancelled = Atomic<Bool>(false)
        // Only on the download thread.
        var body: [UInt8] = []
        var failure: WebAuthnVerificationError?
        var checkedResponse = false
        var handle: UnsafeMutableRawPointer?
        /// The loaded library's functions, from the start of ``perform(url:milliseconds:)``.
        var api: UnsafePointer<securitykey_curl_api>?

        /// ``subject`` at the start of a sentence.
        var capitalizedSubject: String { subject.prefix(1).uppercased() + subject.dropFirst() }

        init(limit: Int, subject: String) {
            self.limit = limit
            self.subject = subject
        }

        /// `curl_easy_perform` of a GET of `url`, bounded by `milliseconds` and `limit`.
        func perform(url: String, milliseconds: Int) -> Result<[UInt8], any Error> {
            let api: UnsafePointer<securitykey_curl_api>
            switch MetadataBLOBDownload.library {
            case .success(let loaded): api = loaded
            case .failure(let error): return .failure(error)
            }
            self.api = api
            guard let handle = securitykey_curl_easy_init(api) else {
                return .failure(WebAuthnVerificationError(.metadataNetwork, "Cannot fetch \(subject): libcurl did not start."))
            }
            self.handle = handle
            defer {
                securitykey_curl_easy_cleanup(api, handle)
                self.handle = nil
            }
            let context = Unmanaged.passUnretained(self).toOpaque()
            let options: [CURLcode] = [
                securitykey_curl_setopt_string(api, handle, CURLOPT_URL, url),
                securitykey_curl_setopt_string(api, handle, CURLOPT_PROTOCOLS_STR, "http,https"),
                securitykey_curl_setopt_string(api, handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"),
                securitykey_curl_setopt_long(api, handle, CURLOPT_FOLLOWLOCATION, 1),
                securitykey_curl_setopt_long(api, handle, CURLOPT_MAXREDIRS, 10),
                securitykey_curl_setopt_long(api, handle, CURLOPT_TIMEOUT_MS, milliseconds),
                securitykey_curl_setopt_long(api, handle, CURLOPT_CONNECTTIMEOUT_MS, milliseconds),
                // No SIGALRM for name lookups: this is one thread of a multithreaded process.
                securitykey_curl_setopt_long(api, handle, CURLOPT_NOSIGNAL, 1),
                securitykey_curl_setopt_write_function(api, handle, Transfer.write),
                securitykey_curl_setopt_pointer(api, handle, CURLOPT_WRITEDATA, context),
                securitykey_curl_setopt_long(api, handle, CURLOPT_NOPROGRESS, 0),
                securitykey_curl_setopt_progress_function(api, handle, Transfer.progress),
                securitykey_curl_setopt_pointer(api, handle, CURLOPT_XFERINFODATA, context),
            ]
            if let refused = options.first(where: { $0 != CURLE_OK }) {
                return .failure(
                    WebAuthnVerificationError(.metadataNetwork, "Cannot fetch \(subject): \(message(refused))"))
            }
            let code = securitykey_curl_easy_perform(api, handle)
            if let failure { return .failure(failure) }
            if cancelled.load(ordering: .relaxed) { return .failure(CancellationError()) }
            guard code == CURLE_OK else {
                return .failure(
                    WebAuthnVerificationError(.metadataNetwork, "Cannot fetch \(subject): \(message(code))"))
            }
            // An answer with an empty body never reached the write callback's check.
            if !checkedResponse, let failure = checkResponse() { return .failure(failure) }
            return .success(body)
        }

        /// The status and the announced length of the final response: the first failure found.
        func checkResponse() -> WebAuthnVerificationError? {
            checkedResponse = true
            guard let api else { return nil }
            var status = 0
            _ = securitykey_curl_getinfo_long(api, handle, CURLINFO_RESPONSE_CODE, &status)
            if status != 200 {
                return WebAuthnVerificationError(.metadataHTTPStatus, "The server answered HTTP \(status), not \(subject).")
            }
            var length: curl_off_t = -1
            _ = securitykey_curl_getinfo_offset(api, handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
            if length > curl_off_t(limit) {
                return WebAuthnVerificationError(.metadataTooLarge, "\(capitalizedSubject) offered is larger than \(Self.size(limit)).")
            }
            return nil
        }

        /// A size cap in words: MiB from 1 MiB up, else KiB.
        static func size(_ bytes: Int) -> String { bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB" }

        func message(_ code: CURLcode) -> String {
            api.flatMap { securitykey_curl_easy_strerror($0, code) }.map { String(cString: $0) }
                ?? "libcurl error \(code.rawValue)"
        }

        /// CURLOPT_WRITEFUNCTION: appends a piece of the body; returning less than given aborts.
        static let write: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
            data, size, count, context in
            guard let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            let total = size * count
            if !transfer.checkedResponse, let failure = transfer.checkResponse() {
                transfer.failure = failure
                return 0
            }
            guard transfer.body.count + total <= transfer.limit else {
                transfer.failure = WebAuthnVerificationError(
                    .metadataTooLarge,
                    "\(transfer.capitalizedSubject) is larger than \(Transfer.size(transfer.limit)).")
                return 0
            }
            if let data, total > 0 {
                transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: total))
            }
            return total
        }

        /// CURLOPT_XFERINFOFUNCTION: a non-zero return aborts the transfer (the caller cancelled).
        static let progress: @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
            -> Int32 = { context, _, _, _, _ in
                guard let context else { return 1 }
                return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().cancelled.load(ordering: .relaxed)
                    ? 1 : 0
            }
    }
}
