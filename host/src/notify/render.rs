//! What a notification says to a person: a title and lines of text, used alike by mail and by the
//! chat formats (Discord, Slack, Telegram).

use serde_json::Value;

use crate::notices::Kind;

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub title: String,
    pub lines: Vec<String>,
}

impl Message {
    /// The title, a blank line, then the lines.
    pub fn text(&self) -> String {
        let mut text = self.title.clone();
        if !self.lines.is_empty() {
            text.push_str("\n\n");
            text.push_str(&self.lines.join("\n"));
        }
        text
    }

    /// The text cut to `max` characters (chat services refuse longer messages).
    pub fn text_within(&self, max: usize) -> String {
        let text = self.text();
        if text.chars().count() <= max {
            return text;
        }
        let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }

    /// The mail body: the text and why the mail was sent.
    pub fn mail_body(&self) -> String {
        format!(
            "{}\n\n--\nYou receive this because of your tradehost notification settings \
             (notifications in your settings turn each kind off).\n",
            self.text()
        )
    }
}

fn field<'a>(payload: &'a Value, name: &str) -> &'a str {
    payload.get(name).and_then(Value::as_str).unwrap_or("")
}

fn number(payload: &Value, name: &str) -> String {
    match payload.get(name) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => "-".into(),
    }
}

pub fn message(kind: Kind, payload: &Value) -> Message {
    let line = |label: &str, value: String| format!("{label}: {value}");
    match kind {
        Kind::TradeOpened => Message {
            title: format!(
                "Opened {} {} at {}",
                field(payload, "side"),
                field(payload, "symbol"),
                number(payload, "entry_price")
            ),
            lines: vec![
                line("Quantity", number(payload, "quantity")),
                line("Size (USD)", number(payload, "size_usd")),
                line("Fees", number(payload, "fees")),
                line("Strategy", field(payload, "strategy").into()),
                line("Broker", field(payload, "broker").into()),
                line("Time", field(payload, "timestamp").into()),
            ],
        },
        Kind::TradeClosed => Message {
            title: format!(
                "Closed {} {}: P&L {}",
                field(payload, "side"),
                field(payload, "symbol"),
                number(payload, "realized_pnl")
            ),
            lines: vec![
                line(
                    "Entry / exit",
                    format!(
                        "{} / {}",
                        number(payload, "entry_price"),
                        number(payload, "exit_price")
                    ),
                ),
                line("Quantity", number(payload, "quantity")),
                line("P&L %", number(payload, "pnl_pct")),
                line("Fees", number(payload, "fees")),
                line("Exit reason", field(payload, "exit_reason").into()),
                line("Strategy", field(payload, "strategy").into()),
                line("Time", field(payload, "timestamp").into()),
            ],
        },
        Kind::Alarm => Message {
            title: format!(
                "{} alarm: {}",
                field(payload, "level"),
                field(payload, "alarm_type")
            ),
            lines: vec![
                field(payload, "message").to_string(),
                line(
                    "Value / threshold",
                    format!(
                        "{} / {}",
                        number(payload, "current_value"),
                        number(payload, "threshold_value")
                    ),
                ),
                line("Recommended", field(payload, "recommended_action").into()),
                line("Time", field(payload, "timestamp").into()),
            ],
        },
        Kind::BotStatus => {
            let mut lines = vec![field(payload, "message").to_string()];
            if let Some(error) = payload.get("last_error").and_then(Value::as_str) {
                lines.push(line("Reason", error.into()));
            }
            lines.push(line("Time", field(payload, "timestamp").into()));
            Message {
                title: format!("Bot {}", field(payload, "status")),
                lines,
            }
        }
        Kind::KillSwitch => Message {
            title: "Trading halted by the operator".into(),
            lines: vec![
                line("Reason", field(payload, "reason").into()),
                if payload.get("positions_closed") == Some(&Value::Bool(true)) {
                    "Open positions are being closed.".into()
                } else {
                    "Open positions stay open.".into()
                },
                line("Time", field(payload, "timestamp").into()),
            ],
        },
        Kind::DailySummary | Kind::WeeklyReport => {
            let period = if kind == Kind::DailySummary {
                format!("Daily summary for {}", field(payload, "from"))
            } else {
                format!(
                    "Weekly report {} to {}",
                    field(payload, "from"),
                    field(payload, "to")
                )
            };
            Message {
                title: period,
                lines: vec![
                    line(
                        "Trades closed",
                        format!(
                            "{} ({} won, {} lost)",
                            number(payload, "trades"),
                            number(payload, "wins"),
                            number(payload, "losses")
                        ),
                    ),
                    line("Net P&L", number(payload, "net_pnl")),
                    line("Fees", number(payload, "fees")),
                    line("Best trade", number(payload, "best_trade")),
                    line("Worst trade", number(payload, "worst_trade")),
                    line("Open positions", number(payload, "open_positions")),
                    line("Cash", number(payload, "cash")),
                ],
            }
        }
        Kind::Test => Message {
            title: "Test notification from tradehost".into(),
            lines: vec!["This webhook is set up: notifications will arrive here.".into()],
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_closed_trade_reads_as_a_trader_would_write_it() {
        let message = message(
            Kind::TradeClosed,
            &json!({"side": "long", "symbol": "BTC-USD", "realized_pnl": "12.3400",
                    "entry_price": "100", "exit_price": "101.5", "quantity": "2",
                    "pnl_pct": "1.5", "fees": "0.2", "exit_reason": "take_profit",
                    "strategy": "ema-cross", "timestamp": "2026-11-24T10:00:00.000Z"}),
        );
        assert_eq!(message.title, "Closed long BTC-USD: P&L 12.3400");
        assert!(message.text().contains("Entry / exit: 100 / 101.5"));
        assert!(message.mail_body().contains("notification settings"));
    }

    #[test]
    fn long_text_is_cut_for_chat_services() {
        let message = Message {
            title: "t".into(),
            lines: vec!["x".repeat(5000)],
        };
        let text = message.text_within(2000);
        assert_eq!(text.chars().count(), 2000);
        assert!(text.ends_with('…'));
        assert_eq!(
            Message {
                title: "t".into(),
                lines: vec![]
            }
            .text_within(10),
            "t"
        );
    }
}
