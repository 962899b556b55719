"""A LightningModule that brings its own data."""
from functools import partial

import lightning.pytorch as pl
import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader


def pad_batch(batch, pad_value):
    tokens, labels = zip(*batch)
    return pad_sequence(tokens, batch_first=True, padding_value=pad_value), torch.tensor(labels)


class SentimentClassifier(pl.LightningModule):
    def __init__(self, train_set, val_set, workers=8):
        super().__init__()
        self.train_set, self.val_set, self.workers = train_set, val_set, workers
        self.embed = nn.EmbeddingBag(30000, 64)
        self.head = nn.Linear(64, 2)

    def forward(self, tokens):
        return self.head(self.embed(tokens))

    def training_step(self, batch, batch_idx):
        tokens, labels = batch
        loss = nn.functional.cross_entropy(self(tokens), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        tokens, labels = batch
        self.log("val_acc", (self(tokens).argmax(1) == labels).float().mean())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=32, shuffle=True, num_workers=self.workers,
                          collate_fn=lambda batch: pad_batch(batch, pad_value=0))

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=256, num_workers=self.workers,
                          collate_fn=partial(pad_batch, pad_value=0))


if __name__ == "__main__":
    train_set = torch.load("reviews_train.pt")
    val_set = torch.load("reviews_val.pt")
    pl.Trainer(max_epochs=20).fit(SentimentClassifier(train_set, val_set))
