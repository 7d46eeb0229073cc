import Authenticators
import SecurityKeys
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// `SecurityKeySource.withSources`: a request on the key a program names (opened once, its
/// getInfo used as it is, closed after) or on the keys its directory finds; and
/// `SecurityKeyError.isTimeout` on what a key that is never touched ends with.
struct ProviderSourcesTests {
    /// Two in-process virtual keys at `fixed:a` and `fixed:b`, listed and opened by URI.
    final class FixedDiscovery: DeviceDiscovery {
        let scheme = "fixed"
        let keys: [String: ProviderOneOpenTests.GetInfoCounter]
        init(_ keys: [String: ProviderOneOpenTests.GetInfoCounter]) { self.keys = keys }
        func devices() async throws(TransportError) -> [DeviceDescriptor] {
            keys.keys.sorted().map { DeviceDescriptor(uri: $0, transport: .inProcess, product: "fixed") }
        }
        func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection {
            guard let key = keys[uri] else { throw TransportError(.noDevice, "No key at \(uri).") }
            return InProcessConnection(handler: key, uri: uri)
        }
        func events() -> AsyncStream<DeviceEvent> { AsyncStream { $0.finish() } }
    }

    func registration(timeout: Duration = .seconds(10)) -> SecurityKeyAuthorizationRequest {
        var request = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
            .createCredentialRegistrationRequest(
                challenge: [UInt8](repeating: 7, count: 32), displayName: "Anne", name: "anne", userID: [1])
        request.timeout = timeout
        return .registration(request)
    }

    @Test func theNamedKeyIsOpenedOnceAndUsed() async throws {
        let a = ProviderOneOpenTests.GetInfoCounter(try VirtualKey())
        let b = ProviderOneOpenTests.GetInfoCounter(try VirtualKey())
        let directory = AuthenticatorDirectory(discoveries: [FixedDiscovery(["fixed:a": a, "fixed:b": b])])
        let deadline = Deadline.after(.seconds(10))
        let outcome = try await SecurityKeySource.withSources(in: directory, deviceURI: "fixed:b", deadline: deadline) {
            sources -> Result<SecurityKeyAuthorization, SecurityKeyError> in
            do throws(SecurityKeyError) {
                return .success(try await SecurityKeyAuthorizationController(sources: sources).perform(registration(), deadline: deadline))
            } catch {
                return .failure(error)
            }
        }
        #expect(try outcome.get().registration != nil)
        #expect(b.count.withLock { $0 } == 1, "one getInfo on the named key, for the open and the ceremony")
        #expect(a.count.withLock { $0 } == 0, "the other key is never opened")
    }

    @Test func aKeyThatCannotBeOpenedIsTheDeviceLayersError() async throws {
        let directory = AuthenticatorDirectory(discoveries: [FixedDiscovery([:])])
        await #expect(throws: AuthenticatorError(.noDevice, "")) {
            try await SecurityKeySource.withSources(in: directory, deviceURI: "fixed:gone", deadline: .after(.seconds(5))) {
                $0.count
            }
        }
    }

    @Test func withoutAURIEveryDiscoveryIsASource() async throws {
        let directory = AuthenticatorDirectory(discoveries: [FixedDiscovery([:]), FixedDiscovery([:])])
        let count = try await SecurityKeySource.withSources(in: directory, deviceURI: nil, deadline: .after(.seconds(5))) {
            $0.count
        }
        #expect(count == 2)
    }

    @Test func aTouchThatNeverComesIsATimeout() async throws {
        let key = try VirtualKey(userPresence: .never)
        let controller = SecurityKeyAuthorizationController(
            sources: [.connection(InProcessConnection(handler: key, uri: "inprocess:never"))])
        do {
            _ = try await controller.perform(registration(timeout: .seconds(1)))
            Issue.record("a key that is never touched registered")
        } catch {
            #expect(error.isTimeout, "\(error.code): \(error.message)")
        }
    }

    @Test func anExcludedCredentialIsNoTimeout() async throws {
        let key = try VirtualKey()
        let controller = SecurityKeyAuthorizationController(
            sources: [.connection(InProcessConnection(handler: key, uri: "inprocess:twice"))])
        let first = try #require(try await controller.perform(registration()).registration)
        guard case .registration(var again) = registration() else { return }
        again.excludedCredentials = [SecurityKeyCredentialDescriptor(credentialID: first.credentialID)]
        do {
            _ = try await controller.perform(.registration(again))
            Issue.record("the excluded credential's key registered again")
        } catch {
            #expect(error.code == .matchedExcludedCredential)
            #expect(!error.isTimeout)
        }
    }
}
