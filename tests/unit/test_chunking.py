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
