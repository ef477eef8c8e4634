"""The turn pipeline: one message in, context gathered, the model asked, the reply out."""
