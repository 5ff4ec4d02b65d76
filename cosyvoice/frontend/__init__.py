"""Text frontend: cleaning, checks, sentence splitting, English normalization."""

from cosyvoice.frontend.clean import clean_text
from cosyvoice.frontend.en_normalize import normalize_en
from cosyvoice.frontend.sentences import split_sentences
from cosyvoice.frontend.text_checks import check_script, check_text, detect_script

__all__ = ["check_script", "check_text", "clean_text", "detect_script", "normalize_en",
           "split_sentences"]
