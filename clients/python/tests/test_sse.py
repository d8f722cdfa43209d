"""The SSE decoder, fed the lines of a stream."""

from __future__ import annotations

from agentd_client._sse import SSEDecoder, SSEMessage


def decode(text: str) -> tuple[list[SSEMessage], SSEDecoder]:
    decoder = SSEDecoder()
    messages = [m for line in text.split("\n") if (m := decoder.feed(line)) is not None]
    return messages, decoder


def test_fields_of_one_event() -> None:
    messages, decoder = decode('id: 7\nevent: task.started\ndata: {"seq": 7}\n\n')
    assert messages == [SSEMessage(event="task.started", data='{"seq": 7}', id="7")]
    assert decoder.last_event_id == "7"


def test_multi_line_data_is_joined_with_line_feeds() -> None:
    messages, _ = decode("data: first\ndata:second\ndata:  third\n\n")
    assert messages[0].data == "first\nsecond\n third"


def test_comments_are_skipped_and_a_blank_line_alone_dispatches_nothing() -> None:
    messages, _ = decode(": keep-alive\n\n:\n\ndata: x\n: inside\n\n")
    assert messages == [SSEMessage(event="message", data="x", id=None)]


def test_retry_field_sets_the_reconnection_time_and_bad_values_are_ignored() -> None:
    _, decoder = decode("retry: 500\n\n")
    assert decoder.retry_ms == 500
    decoder.feed("retry: soon")
    decoder.feed("retry: -1")
    assert decoder.retry_ms == 500


def test_an_event_without_id_keeps_the_last_event_id() -> None:
    messages, decoder = decode(
        "id: 3\nevent: a\ndata: 1\n\nevent: llm.delta\ndata: 2\n\n"
    )
    assert [m.id for m in messages] == ["3", None]
    assert decoder.last_event_id == "3"


def test_an_id_without_data_sets_the_last_event_id_without_a_message() -> None:
    messages, decoder = decode("id: 41\n\n")
    assert messages == []
    assert decoder.last_event_id == "41"


def test_an_id_holding_nul_is_ignored() -> None:
    _, decoder = decode("id: 1\n\nid: 2\0\n\n")
    assert decoder.last_event_id == "1"


def test_a_leading_byte_order_mark_and_a_field_without_colon() -> None:
    messages, _ = decode("\ufeffevent: x\ndata\n\n")
    assert messages == [SSEMessage(event="x", data="", id=None)]


def test_unknown_fields_are_ignored_and_event_resets_between_messages() -> None:
    messages, _ = decode("foo: bar\nevent: a\ndata: 1\n\ndata: 2\n\n")
    assert [(m.event, m.data) for m in messages] == [("a", "1"), ("message", "2")]


def test_the_id_of_an_incomplete_message_does_not_count() -> None:
    decoder = SSEDecoder()
    for line in ["id: 2", "data: x", "", "id: 3", "event: task.started"]:
        decoder.feed(line)
    assert decoder.last_event_id == "2"
