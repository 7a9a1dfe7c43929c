internal import CZeroMQ
import Foundation

/// A CURVE key pair as Z85 text (40 characters each), the form ZeroMQ tools and config files use.
///
/// ```swift
/// let server = try CurveKeyPair.generate()
/// try socket.set(.curveSecretKey, try CurveKeyPair.decode(server.secretKey))
/// ```
public struct CurveKeyPair: Equatable, Sendable {
  /// The public key, safe to share.
  public let publicKey: String
  /// The secret key.
  public let secretKey: String

  /// Generates a new key pair.
  ///
  /// - Throws: ``ZMQError`` when libzmq was built without CURVE.
  public static func generate() throws -> CurveKeyPair {
    var publicKey = [CChar](repeating: 0, count: 41)
    var secretKey = [CChar](repeating: 0, count: 41)
    try zmqCall("zmq_curve_keypair") { zmq_curve_keypair(&publicKey, &secretKey) }
    return CurveKeyPair(publicKey: text(publicKey), secretKey: text(secretKey))
  }

  /// The key pair whose secret key is `secretKey` (its public key derived).
  ///
  /// - Parameter secretKey: A Z85 secret key.
  /// - Throws: ``ZMQError`` when the key is not 40 Z85 characters.
  public init(secretKey: String) throws {
    _ = try Self.decode(secretKey)
    var publicKey = [CChar](repeating: 0, count: 41)
    try zmqCall("zmq_curve_public") { zmq_curve_public(&publicKey, secretKey) }
    self.init(publicKey: Self.text(publicKey), secretKey: secretKey)
  }

  /// The key pair of the secret key in the file at `path`, as `broker keygen` writes it (white
  /// space around the key is ignored).
  ///
  /// - Throws: ``CurveKeyFileError`` naming the file and whether it is missing, unreadable, or
  ///   does not hold a secret key.
  public init(secretKeyFile path: String) throws(CurveKeyFileError) {
    // Any 32 bytes make a secret key, so a public key given by mistake would be taken as one
    // and then fail the handshake far from here; `broker keygen`'s name for it gives it away.
    guard !path.hasSuffix(".pub") else {
      throw CurveKeyFileError(
        path: path, reason: "is a public key file (.pub): give the secret one (.key) beside it")
    }
    let text = try Self.text(ofKeyFile: path).trimmingCharacters(in: .whitespacesAndNewlines)
    do {
      try self.init(secretKey: text)
    } catch {
      throw CurveKeyFileError(
        path: path, reason: "does not hold a CURVE secret key (40 Z85 characters)")
    }
  }

  /// The text of the key file (or allow list) at `path`, or an error that says whether it is
  /// missing or unreadable.
  public static func text(ofKeyFile path: String) throws(CurveKeyFileError) -> String {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
      throw CurveKeyFileError(path: path, reason: "no such file")
    }
    guard !isDirectory.boolValue else { throw CurveKeyFileError(path: path, reason: "a directory") }
    // A handle, not `FileManager.contents`: that gives nil for `/dev/null` and for a shell's
    // process substitution (`--allow-keys <(...)`), which are readable.
    guard let handle = FileHandle(forReadingAtPath: path) else {
      throw CurveKeyFileError(path: path, reason: "cannot be read (permissions?)")
    }
    defer { try? handle.close() }
    guard let data = try? handle.readToEnd() ?? Data() else {
      throw CurveKeyFileError(path: path, reason: "cannot be read")
    }
    return String(decoding: data, as: UTF8.self)
  }

  private init(publicKey: String, secretKey: String) {
    self.publicKey = publicKey
    self.secretKey = secretKey
  }

  /// The 32 bytes of a Z85 key.
  ///
  /// - Parameter key: 40 Z85 characters.
  /// - Returns: The raw key.
  /// - Throws: ``ZMQError`` (`EINVAL`) when the text is not a Z85 key.
  public static func decode(_ key: String) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: 32)
    guard key.utf8.count == 40, zmq_z85_decode(&bytes, key) != nil else {
      throw ZMQError(code: EINVAL, function: "zmq_z85_decode")
    }
    return bytes
  }

  /// The Z85 text of 32 raw key bytes.
  ///
  /// - Parameter bytes: A raw key.
  /// - Returns: 40 Z85 characters.
  public static func encode(_ bytes: [UInt8]) -> String {
    guard bytes.count == 32 else { return "" }
    var text = [CChar](repeating: 0, count: 41)
    _ = zmq_z85_encode(&text, bytes, 32)
    return Self.text(text)
  }

  private static func text(_ characters: [CChar]) -> String {
    String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
