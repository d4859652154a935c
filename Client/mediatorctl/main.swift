// The entry point; the verbs are in the other files of this folder.
await Mediatorctl.start()
