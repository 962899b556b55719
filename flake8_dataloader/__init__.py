"""flake8 plugin catching PyTorch DataLoader worker mistakes."""

__version__ = "0.1.0"
