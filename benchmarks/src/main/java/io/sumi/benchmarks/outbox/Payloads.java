package io.sumi.benchmarks.outbox;

/**
 * The message both systems send: a small JSON document (~200 bytes) carrying its phase and its
 * creation time (epoch microseconds, taken inside the appending transaction, before the commit).
 */
final class Payloads {

    private static final String PAD = "x".repeat(120);

    private Payloads() {}

    static String create(String phase, long seq, String aggregateId) {
        return "{\"phase\":\"" + phase + "\",\"seq\":" + seq + ",\"aggregate\":\"" + aggregateId + "\",\"created\":"
                + LagRecorder.nowMicros() + ",\"pad\":\"" + PAD + "\"}";
    }

    static String phase(String payload) {
        int start = payload.indexOf("\"phase\":\"");
        if (start < 0) {
            return null;
        }
        start += 9;
        return payload.substring(start, payload.indexOf('"', start));
    }

    static long createdMicros(String payload) {
        int start = payload.indexOf("\"created\":") + 10;
        int end = start;
        while (end < payload.length() && Character.isDigit(payload.charAt(end))) {
            end++;
        }
        return Long.parseLong(payload, start, end, 10);
    }

    static String aggregate(long seq, int aggregates) {
        return "agg-" + (seq % aggregates);
    }
}
