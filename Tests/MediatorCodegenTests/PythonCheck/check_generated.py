"""Runs the golden Python modules against the stand-in `mediator` package:
wire names, absent optionals, enums, nested and shared types, streams,
oneway sends and the service side. Exits non-zero on the first failure."""
import mediator
import notes
import shapes
import keywords
import streams
import recursive
import bounds
import alternatives
import descriptors

# Client: params in wire form, results typed.
client = mediator.Client([{"id": 7}, {"notes": [{"id": 1, "text": "a"}]}])
typed = notes.NotesClient(client)
assert typed.add(notes.AddParams(text="hi", note_kind=notes.AddParamsNoteKind.TODO)) == notes.AddResult(id=7)
assert client.sent[-1] == ("Notes", "add", {"text": "hi", "note_kind": "todo"}), client.sent[-1]
assert typed.list().notes == [notes.Note(id=1, text="a")]
assert client.sent[-1] == ("Notes", "list", {})

# Required nullable members are written as null; optional ones left out.
draw = shapes.DrawParams(
    scene=shapes.DrawParamsScene(shapes=[shapes.DrawParamsSceneShapesItem(
        kind=shapes.DrawParamsSceneShapesItemKind.POLY_LINE, points=[shapes.Point(x=1, y=2)])]),
    style=shapes.DrawParamsStyle.FILL, must_be_there=None, both=["a", None])
wire = draw.to_json()
assert wire == {"scene": {"shapes": [{"kind": "poly-line", "points": [{"x": 1, "y": 2}]}]},
                "style": "fill", "must_be_there": None, "both": ["a", None]}, wire
assert shapes.DrawParams.from_json(wire) == draw

# Escaped names keep their wire names.
params = keywords.ClassParams(class_="c", default=1, self_=True, type=keywords.ClassParamsType.NONE, import_="i")
assert params.to_json() == {"class": "c", "default": 1, "self": True, "Type": "None", "import": "i"}, params.to_json()
assert keywords.ClassParams.from_json(params.to_json()) == params
# Non-ASCII names as escapes (x² and x_u00b2 collide once escaped: suffix), wire names kept.
unicode = keywords.UnicodeParams(x_u00b2="a", x_u00b22="b", u00b2=2, ufb01_eld="f", field="g",
                                 unit=keywords.UnicodeParamsUnit.M_U00B2)
assert unicode.to_json() == {"x_u00b2": "a", "x²": "b", "²": 2, "ﬁeld": "f", "field": "g", "unit": "m²"}, unicode.to_json()
assert keywords.UnicodeParams.from_json(unicode.to_json()) == unicode

# Streams and oneway.
client = mediator.Client([{"i": 1}, {"i": 2, "done": True}])
typed = streams.StreamsTestClient(client)
assert list(typed.count(streams.CountParams(n=2))) == [streams.CountResult(i=1), streams.CountResult(i=2, done=True)]
typed.poke(streams.PokeParams(who="me"))
typed.fire()
assert client.sent[-2:] == [("Streams-Test", "poke", {"who": "me"}), ("Streams-Test", "fire", {})], client.sent


# Service: typed handlers behind the registered specs.
class Counter(streams.StreamsTestService):
    def count(self, params, ctx):
        self.send_count_partial(ctx, streams.CountResult(i=1))
        return streams.CountResult(i=params.n, done=True)


service = streams.make_service(Counter())
assert service.target == "Streams-Test"
assert service.actions == streams.INTERFACE["actions"]
assert [spec["name"] for spec in service.actions] == ["count", "follow", "poke", "fire"]
ctx = mediator.CallContext()
assert service.handlers["count"]({"n": 3}, ctx) == {"i": 3, "done": True}

# serve(): mediator.serve (SIGTERM and SIGINT shut down gracefully) with the service made for the target.
streams.serve(Counter(), socket="/run/x.sock", target="Other", grace=2.5)
served, grace, run_kwargs = mediator.served[-1]
assert served.target == "Other" and grace == 2.5, (served.target, grace)
assert run_kwargs == {"socket": "/run/x.sock", "name": None, "reconnect": True, "on_registered": None}, run_kwargs
assert ctx.partials == [{"i": 1}]

# Types that lead back to themselves through object properties.
cell = recursive.ListCell(value=1, next=recursive.ListCell(value=2))
assert cell.to_json() == {"value": 1, "next": {"value": 2}}, cell.to_json()
assert recursive.ListCell.from_json(cell.to_json()) == cell
ping = recursive.Ping(label="a", pong=recursive.Pong(ping=recursive.Ping(label="b")))
assert recursive.Ping.from_json(ping.to_json()) == ping

# Schema defaults: the fields' defaults, and what an absent or null member reads as.
search = bounds.SearchParams(query="q", version=2)
assert (search.limit, search.ratio, search.exact, search.order, search.fields, search.page) == \
    (10, 0.5, False, bounds.SearchParamsOrder.DESC, ["title"], 0), search
assert search.label is None and search.filter is None
assert bounds.SearchParams(query="q", version=2).fields is not search.fields  # a new list each time
read = bounds.SearchParams.from_json({"query": "q", "version": 2, "page": 1, "ratio": None})
assert read == bounds.SearchParams(query="q", version=2, page=1), read
assert read.to_json()["order"] == "desc"

# Bounds and const: checked when a dataclass is built, so by from_json too.
for build in (lambda: bounds.SearchParams(query="", version=2),
              lambda: bounds.SearchParams(query="q", version=3),
              lambda: bounds.SearchResult.from_json({"hits": [{"title": "t", "score": 2}]})):
    try:
        build()
    except mediator.MediatorError as error:
        assert error.args[0] == "invalid_params", error.args
    else:
        raise AssertionError("out of bounds, yet built")

# anyOf/oneOf: a Union, read by trying each alternative.
pick = alternatives.SetParams.from_json({"key": "k", "value": 3, "shape": {"side": 1}, "tags": ["a", ["b"]]})
assert pick == alternatives.SetParams(key="k", value=3, shape=alternatives.Square(side=1), tags=["a", ["b"]]), pick
assert pick.to_json() == {"key": "k", "value": 3, "shape": {"side": 1}, "tags": ["a", ["b"]]}, pick.to_json()
try:
    alternatives.SetParams.from_json({"key": "k", "value": 3, "shape": {"side": 1, "radius": 1}})
except mediator.MediatorError as error:
    assert error.args[0] == "invalid_params", error.args
else:
    raise AssertionError("two alternatives of a oneOf read it, yet it was read")

# Descriptors: the package places and takes them; the module passes FD markers
# on as they are and reads back only what the package received.
sent, dir_fd = mediator.FD(5), mediator.FD(6)
params = descriptors.OpenParams(path="p", dir=dir_fd)
assert params.to_json() == {"path": "p", "dir": dir_fd}, params.to_json()
a, b = mediator.ReceivedFD(7), mediator.ReceivedFD(8)
client = mediator.Client([{"file": a, "extra": [b, a], "log": {"label": "l", "file": None}}, b])
typed = descriptors.DescriptorsClient(client)
opened = typed.open(params)
assert (opened.file, opened.extra, opened.log) == (a, [b, a], descriptors.Labelled(label="l", file=None)), opened
assert client.sent[-1] == ("Descriptors", "open", {"path": "p", "dir": dir_fd}), client.sent[-1]
assert typed.memfd() is b
for wrong in ({"file": {"$fd": 0}}, {"file": 3}, {"file": sent}):
    try:
        descriptors.OpenResult.from_json(wrong)
    except TypeError as error:
        assert "expected a descriptor" in str(error), error
    else:
        raise AssertionError("read %r as a descriptor" % (wrong,))
assert descriptors.DropParams(file=sent).to_json() == {"file": sent}
# A service whose interface has descriptors says fds: true in hello.
descriptors.serve(descriptors.DescriptorsService(), socket="/run/x.sock")
assert mediator.served[-1][2]["fds"] is True, mediator.served[-1]

print("ok")
