"""What a student does in a class's stage: answer in its question box (a box per number, or one box), and read the
receipt the class route sent back."""

from __future__ import annotations

import re


def send_answer(page, text: str) -> None:
    """Type `text` ("5, 7") into the open question's boxes, send it, and wait for the stored receipt."""
    question = page.locator(".class-question")
    boxes = question.locator("input.class-box")
    numbers = [part.strip() for part in text.split(",")]
    if boxes.count() == len(numbers):
        for box, number in zip(boxes.all(), numbers, strict=True):
            box.fill(number)
    else:
        boxes.first.fill(text)
    question.get_by_role("button", name="Send my answer").click()
    receipt = f"Stored: {', '.join(numbers)} (you can change it until the vote closes)."
    question.get_by_text(receipt, exact=True).wait_for()


def form_drawn(page, vote: int):
    """The answer form of vote `vote`, as the stage draws it."""
    return page.locator(".class-question fieldset").get_by_text(re.compile(rf"^Your answer, vote {vote}$"))
