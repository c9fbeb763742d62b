"""Recurrent layers: cells, RNN/LSTM/GRU, ConvLSTM, Bidirectional, TimeDistributed."""
