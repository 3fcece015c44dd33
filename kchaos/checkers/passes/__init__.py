"""The Spark passes over a history: its rows as DataFrames (`frames`), and the few repartitionings that
mark, in one flag column per anomaly, every row taking part in one.

Separate from the anomalies cut from them because the passes are where a check spends its time: each moves
the rows once, so which shuffles a check does is read here, and nowhere else.
"""
