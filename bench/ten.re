^(partition-heal|stale-leader-keeps-writing|shutdown-under-load|repeated-takeovers|neg-fencing-off|neg-ignore-demotion-unfenced-sink|neg-live-epoch|neg-no-drain|neg-term-on-renew|neg-no-term-bump)$
