"""The console's log format: progress (INFO) with its time, a warning or an error as one line in the
format of every other mistake the tools report, ``gatelab: ...`` (``gatelab: warning: ...``)."""
import logging


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            kind = "" if record.levelno >= logging.ERROR else "warning: "
            text = f"gatelab: {kind}{record.getMessage()}"
            if record.exc_info:
                text += "\n" + self.formatException(record.exc_info)
            return text
        return super().format(record)
