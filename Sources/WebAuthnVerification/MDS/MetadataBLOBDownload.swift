import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads a metadata BLOB (FIDO MDS3 §3.1.7) over HTTP(S) with URLSession, with an overall
/// deadline and a size cap that cancels the transfer as soon as it is exceeded. The bytes are
/// not verified here: hand them to ``MetadataBLOBVerifier`` and store them with ``MetadataCache``.
public enum MetadataBLOBDownload {
    /// Where FIDO publishes the BLOB.
    public static let defaultURL = "https://mds3.fidoalliance.org/"

    /// The body at `text` (an http or https URL): at most `limit` bytes, within `timeout` seconds.
    public static func get(_ text: String, limit: Int, timeout: TimeInterval) async throws -> [UInt8] {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { throw WebAuthnVerificationError(.metadataURLInvalid, "\(text) is not an http or https URL.") }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        let collector = CappedCollector(limit: limit)
        let session = URLSession(configuration: configuration, delegate: collector, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: URLRequest(url: url, timeoutInterval: timeout))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                collector.start(continuation)
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// Collects a body up to a limit and resumes its continuation once.
    final class CappedCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let limit: Int
        private let lock = NSLock()
        private var body: [UInt8] = []
        private var continuation: CheckedContinuation<[UInt8], any Error>?
        private var failure: WebAuthnVerificationError?

        init(limit: Int) { self.limit = limit }

        func start(_ continuation: CheckedContinuation<[UInt8], any Error>) {
            lock.withLock { self.continuation = continuation }
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            if let http = response as? HTTPURLResponse, http.statusCode != 200 {
                lock.withLock {
                    failure = WebAuthnVerificationError(
                        .metadataHTTPStatus, "The server answered HTTP \(http.statusCode), not the BLOB.")
                }
                completionHandler(.cancel)
                return
            }
            if response.expectedContentLength > Int64(limit) {
                lock.withLock {
                    failure = WebAuthnVerificationError(
                        .metadataTooLarge, "The BLOB offered is larger than \(limit >> 20) MiB.")
                }
                completionHandler(.cancel)
                return
            }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let over = lock.withLock { () -> Bool in
                body.append(contentsOf: data)
                if body.count > limit {
                    failure = WebAuthnVerificationError(.metadataTooLarge, "The BLOB is larger than \(limit >> 20) MiB.")
                    return true
                }
                return false
            }
            if over { dataTask.cancel() }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?)
        {
            let (continuation, result):
                (CheckedContinuation<[UInt8], any Error>?, Result<[UInt8], any Error>) =
                    lock.withLock {
                        let c = self.continuation
                        self.continuation = nil
                        if let failure { return (c, .failure(failure)) }
                        if let error {
                            return (
                                c,
                                .failure(
                                    WebAuthnVerificationError(
                                        .metadataNetwork, "Cannot fetch the BLOB: \(error.localizedDescription)"))
                            )
                        }
                        return (c, .success(body))
                    }
            continuation?.resume(with: result)
        }
    }
}
