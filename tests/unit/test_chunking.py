from layers.episodic.chunking import chunk_text, episode_text


def test_short_text_is_one_chunk() -> None:
    assert chunk_text("deploy the api on friday") == ["deploy the api on friday"]


def test_long_text_is_split_into_overlapping_windows_covering_every_word() -> None:
    words = [f"w{i}" for i in range(1000)]
    chunks = chunk_text(" ".join(words), window=160, overlap=40)
    assert all(len(chunk.split()) <= 160 for chunk in chunks)
    covered = {word for chunk in chunks for word in chunk.split()}
    assert covered == set(words)
    # Consecutive windows share the overlap, so a sentence on a boundary stays whole once.
    assert chunks[0].split()[-40:] == chunks[1].split()[:40]
    assert chunks[-1].split()[-1] == "w999"


def test_episode_text_joins_message_and_summary() -> None:
    assert episode_text("what is our deploy day?", "Friday, after standup.") == (
        "what is our deploy day?\nFriday, after standup."
    )
    assert episode_text("  hello ", "") == "hello"


def test_a_turn_of_several_sentences_is_one_unit_a_sentence_with_its_speaker() -> None:
    from layers.episodic.chunking import episode_units

    text = "Wow! I went hiking at Mount Rainier last week. It rained the whole time. Thanks."
    assert episode_units(text, "", "Dana") == [
        "Dana: I went hiking at Mount Rainier last week.",
        "Dana: It rained the whole time.",
    ]
    # The reply's summary is a unit of its own; one long sentence is the whole turn.
    assert episode_units(text, "Asked about the hike.", None)[-1] == "Asked about the hike."
    assert episode_units("We ship on Friday, after standup!", "Noted.", "Dana") == [
        "Dana: We ship on Friday, after standup!\nNoted."]
    # The lever off: the whole turn, as before.
    assert episode_units(text, "", "Dana", by_sentence=False) == [f"Dana: {text}"]
