package io.sumi.store;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How a {@link StoredReply} is kept by a ledger: one binary value (the JDBC ledger's {@code reply}
 * column, the Redis ledger's {@code r} field), so the reply is written by the same statement as the
 * row's {@code COMPLETED} and removed with the row. One format for every store.
 *
 * <p>Format (big-endian): a version byte ({@code 1}); the header count (int); per header its name
 * and its value, each as a length (int) and UTF-8 bytes; the body's length (int) and the body.
 * Exactly {@link StoredReply#size()} bytes.
 *
 * @since 0.1.0
 */
public final class StoredReplyCodec {

    private static final int VERSION = 1;

    private StoredReplyCodec() {}

    /** The reply's bytes, exactly {@link StoredReply#size()} of them. */
    public static byte[] encode(StoredReply reply) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(reply.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeInt(reply.headers().size());
            for (Map.Entry<String, String> header : reply.headers().entrySet()) {
                writeText(out, header.getKey());
                writeText(out, header.getValue());
            }
            byte[] payload = reply.payload();
            out.writeInt(payload.length);
            out.write(payload);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex); // a ByteArrayOutputStream does not throw
        }
        return bytes.toByteArray();
    }

    /**
     * The reply {@link #encode} wrote.
     *
     * @throws IllegalStateException if {@code column} is not a reply this class wrote
     */
    public static StoredReply decode(byte[] column) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(column))) {
            int version = in.readUnsignedByte();
            if (version != VERSION) {
                throw new IllegalStateException("The ledger's stored reply has format version " + version
                        + ", which this version of Sumi cannot read (it reads version " + VERSION + ")");
            }
            int count = in.readInt();
            Map<String, String> headers = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                String name = readText(in);
                headers.put(name, readText(in));
            }
            byte[] payload = new byte[length(in)];
            in.readFully(payload);
            return new StoredReply(payload, headers);
        } catch (IOException ex) {
            throw new IllegalStateException("The ledger's stored reply is damaged (" + column.length + " bytes)", ex);
        }
    }

    /** A length that fits in what is left of the column (a damaged one must not allocate gigabytes). */
    private static int length(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 0 || length > in.available()) {
            throw new IOException("a length of " + length + " with " + in.available() + " bytes left");
        }
        return length;
    }

    private static void writeText(DataOutputStream out, String text) throws IOException {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
    }

    private static String readText(DataInputStream in) throws IOException {
        byte[] utf8 = new byte[length(in)];
        in.readFully(utf8);
        return new String(utf8, StandardCharsets.UTF_8);
    }
}
