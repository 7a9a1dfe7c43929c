public import ArgumentParser
import Foundation
public import SharedBroker
import ZeroMQ

/// The CURVE options of a program that connects to a broker (`counter`, `profile`,
/// `broker ping`): the broker's public key and this client's secret key file, each also read
/// from the environment.
public struct CurveClientOptions: ParsableArguments, Sendable {
  // A Z85 key may begin with "-": see `commandLine(_:)`.
  @Option(
    name: .customLong("curve-server-key"),
    help: "The broker's CURVE public key, Z85 (env SHARED_BROKER_SERVER_KEY)."
  )
  var serverKeyOption: String?

  @Option(
    name: .customLong("curve-key-file"),
    help: "File holding this client's CURVE secret key, Z85 (env SHARED_BROKER_KEY_FILE)."
  )
  var keyFileOption: String?

  /// Creates the defaults: no flags.
  public init() {}

  /// The broker's CURVE public key: `--curve-server-key`, else the environment's.
  public var serverKey: String? {
    serverKeyOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_SERVER_KEY"]
  }

  /// This client's CURVE secret key file: `--curve-key-file`, else the environment's.
  public var keyFile: String? {
    keyFileOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_KEY_FILE"]
  }

  /// Checks that the two come together and that both keys can be used.
  public func validate() throws {
    guard (serverKey == nil) == (keyFile == nil) else {
      throw ValidationError(
        "--curve-server-key and --curve-key-file (or SHARED_BROKER_SERVER_KEY and "
          + "SHARED_BROKER_KEY_FILE) go together.")
    }
    _ = try credentials()
  }

  /// The CURVE credentials from ``serverKey`` and ``keyFile``; `nil` when neither is given.
  public func credentials() throws -> BrokerClient.CurveCredentials? {
    guard let serverKey, let keyFile else { return nil }
    let pair: CurveKeyPair
    do {
      pair = try CurveKeyPair(secretKeyFile: keyFile)
    } catch {
      let source = keyFileOption == nil ? "SHARED_BROKER_KEY_FILE" : "--curve-key-file"
      throw ValidationError("Cannot use \(source) \(error).")
    }
    guard (try? CurveKeyPair.decode(serverKey)) != nil else {
      let source = serverKeyOption == nil ? "SHARED_BROKER_SERVER_KEY" : "--curve-server-key"
      throw ValidationError(
        "\(source) is not a CURVE public key: 40 Z85 characters, the broker's .pub file.")
    }
    return BrokerClient.CurveCredentials(
      serverPublicKey: serverKey, publicKey: pair.publicKey, secretKey: pair.secretKey
    )
  }

  /// `arguments` as ArgumentParser can take them: `--curve-server-key KEY` becomes
  /// `--curve-server-key=KEY`. A Z85 key may begin with "-", "-=" or "--", and ArgumentParser
  /// rejects an argument beginning with "-=" or "--=" as a malformed option wherever it
  /// stands, before it looks for an option's value.
  public static func commandLine(_ arguments: [String]) -> [String] {
    var joined: [String] = []
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      if argument == "--" {
        joined.append(argument)
        joined.append(contentsOf: rest)
        break
      }
      if argument == "--curve-server-key", let key = rest.popFirst() {
        joined.append("\(argument)=\(key)")
      } else {
        joined.append(argument)
      }
    }
    return joined
  }
}
