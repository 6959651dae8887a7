"""The main job: near-duplicate removal from files, as named stages, and its report."""
