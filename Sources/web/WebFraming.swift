import Foundation
import SharedBrokerProtocol

/// PROTOCOL.md's messages over a WebSocket: each text message is a JSON object holding one
/// message's frames as strings. A tab sends `{"request": [frames]}`; the front sends
/// `{"reply": [frames]}` for what the broker's ROUTER answered and `{"published": [frames]}`
/// for what its PUB socket published (topic first). Anything else from a tab is answered with
/// an `ERROR` reply and never reaches the broker.
enum WebFraming {
  /// The largest text message a tab may send: a value at the broker's default limit, with room
  /// for the other frames and the JSON around them.
  static let maxMessageBytes = 1 << 20

  /// The request in a tab's text message, or the `ERROR` reply that refuses it.
  static func request(_ text: String) -> Result<BrokerMessage, RefusedFrame> {
    guard text.utf8.count <= maxMessageBytes else {
      return .failure(
        RefusedFrame(.tooLarge, "a message of \(text.utf8.count) bytes exceeds \(maxMessageBytes)"))
    }
    guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)),
      let fields = object as? [String: Any], fields.count == 1,
      let frames = fields["request"] as? [String]
    else {
      return .failure(
        RefusedFrame(.badRequest, #"not a request: send {"request": [frames as strings]}"#))
    }
    let request: BrokerMessage
    do {
      request = try BrokerMessage(frames: frames.map { Data($0.utf8) })
    } catch {
      return .failure(RefusedFrame(error.code, error.description))
    }
    switch request {
    case .hello, .ping, .sync, .get, .seed, .write: return .success(request)
    default: return .failure(RefusedFrame(.unknownCommand, "not a request"))
    }
  }

  /// The text message that carries a reply or a published message to a tab.
  static func text(_ outbound: TabRelay.Outbound) -> String {
    let (field, frames) =
      switch outbound {
      case .reply(let frames): ("reply", frames)
      case .published(let frames): ("published", frames)
      }
    let strings = frames.map { String(decoding: $0, as: UTF8.self) }
    let data = (try? JSONSerialization.data(withJSONObject: [field: strings])) ?? Data()
    return String(decoding: data, as: UTF8.self)
  }

  /// A tab's message the front refused, as the `ERROR` reply the tab gets.
  struct RefusedFrame: Error, Equatable {
    let code: BrokerErrorCode
    let message: String

    init(_ code: BrokerErrorCode, _ message: String) {
      self.code = code
      self.message = message
    }

    var reply: TabRelay.Outbound {
      .reply(BrokerMessage.error(code: code, message: message, key: nil, write: nil).frames)
    }
  }
}
