package io.sumi.examples.mail;

import jakarta.mail.MessagingException;
import jakarta.mail.internet.MimeMessage;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.regex.Pattern;
import org.springframework.mail.MailPreparationException;
import org.springframework.mail.javamail.JavaMailSender;
import org.springframework.mail.javamail.MimeMessageHelper;

/**
 * Sends mail over SMTP with Spring's {@link JavaMailSender}, carrying the idempotency key twice:
 * as an {@code Idempotency-Key} header, and folded into the {@code Message-ID} (the same key gives
 * the same Message-ID on every attempt), so a mail provider or the receiving mail system can drop
 * a second copy if a crash between the send and the ledger's "done" makes Sumi send it again.
 */
public class SmtpMailGateway implements MailGateway {

    /** The header that carries the key (the name Stripe and the IETF draft use for HTTP). */
    public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

    private static final Pattern PLAIN_ID = Pattern.compile("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
    private static final Pattern PRINTABLE = Pattern.compile("[\\x20-\\x7E]*");

    private final JavaMailSender sender;
    private final String from;
    private final String messageIdDomain;

    public SmtpMailGateway(JavaMailSender sender, String from, String messageIdDomain) {
        this.sender = sender;
        this.from = from;
        this.messageIdDomain = messageIdDomain;
    }

    @Override
    public void send(MailRequest mail, String idempotencyKey) {
        MimeMessage message = sender.createMimeMessage();
        try {
            MimeMessageHelper helper = new MimeMessageHelper(message, StandardCharsets.UTF_8.name());
            helper.setFrom(from);
            helper.setTo(mail.to());
            helper.setSubject(mail.subject());
            helper.setText(mail.body());
            message.setHeader(IDEMPOTENCY_KEY_HEADER, headerValue(idempotencyKey));
            // JavaMailSenderImpl keeps a Message-ID that was set explicitly.
            message.setHeader("Message-ID", messageId(idempotencyKey, messageIdDomain));
        } catch (MessagingException ex) {
            throw new MailPreparationException("Could not prepare the mail for key " + idempotencyKey, ex);
        }
        sender.send(message);
    }

    /**
     * The Message-ID of the mail sent for a key: {@code <key@domain>} when the key is a plain
     * dot-atom of letters, digits, '-', '_' and '.', else {@code <sha256=HEX@domain>} (a plain key
     * never contains '=', so the two forms cannot collide).
     */
    public static String messageId(String key, String domain) {
        String left = key.length() <= 64 && PLAIN_ID.matcher(key).matches() ? key : "sha256=" + sha256(key);
        return "<" + left + "@" + domain + ">";
    }

    /**
     * The key as a header value: as is when printable ASCII, else as an RFC 2047 encoded word
     * (so a key never puts a raw CR or LF, that is another header, into the mail).
     */
    static String headerValue(String key) {
        return PRINTABLE.matcher(key).matches()
                ? key
                : "=?UTF-8?B?" + Base64.getEncoder().encodeToString(key.getBytes(StandardCharsets.UTF_8)) + "?=";
    }

    private static String sha256(String text) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
