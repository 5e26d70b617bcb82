from ui.class_view import class_page

# the introduction opens the start page; a running class's views give the room code and the stage the space
class_page(
    intro="Run a lecture on backprop where the whole room predicts each step. Start a class on a replay: the "
    "projector shows a room code, the join link and a QR code. Students join from a phone or laptop with no "
    "account, and their stage follows yours as you press →. Ask the room what a step will send, or what a "
    "gradient will be: you see on the graph how many answered, how many are right, and which mistakes the wrong "
    "answers show. Then let them discuss, vote again, and reveal. (A Playground program becomes a class from "
    "under its replay.)"
)
