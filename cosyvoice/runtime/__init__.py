"""Our own runtime for the released CosyVoice2 and Fun-CosyVoice3 model folders."""
