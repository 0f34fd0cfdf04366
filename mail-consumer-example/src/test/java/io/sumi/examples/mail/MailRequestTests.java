package io.sumi.examples.mail;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class MailRequestTests {

    @Test
    void readsJson() {
        MailRequest mail = MailRequest.parse(
                "{\"to\": \"alice@example.com\", \"subject\": \"Hi\", \"body\": \"Line 1\\nLine 2\"}");
        assertThat(mail).isEqualTo(new MailRequest("alice@example.com", "Hi", "Line 1\nLine 2"));
    }

    @Test
    void readsTheTextForm() {
        MailRequest mail = MailRequest.parse("To: alice@example.com\r\nsubject: Hi: there\r\n\r\nLine 1\r\n\r\nLine 2");
        assertThat(mail).isEqualTo(new MailRequest("alice@example.com", "Hi: there", "Line 1\n\nLine 2"));
    }

    @Test
    void bothFormsRoundTrip() {
        MailRequest mail = new MailRequest("bob@example.com", "Ünïcödé \"quoted\"", "Body\n\nwith a blank line");
        assertThat(MailRequest.parse(mail.toJson())).isEqualTo(mail);
        assertThat(MailRequest.parse(mail.toText())).isEqualTo(mail);
    }

    @Test
    void rejectsWhatIsNoMailRequest() {
        assertThatThrownBy(() -> MailRequest.parse("")).isInstanceOf(InvalidMailRequestException.class);
        assertThatThrownBy(() -> MailRequest.parse("{\"subject\": \"no recipient\"}"))
                .isInstanceOf(InvalidMailRequestException.class)
                .hasMessageContaining("recipient");
        assertThatThrownBy(() -> MailRequest.parse("{not json"))
                .isInstanceOf(InvalidMailRequestException.class)
                .hasMessageContaining("not valid JSON");
        assertThatThrownBy(() -> MailRequest.parse("just some text"))
                .isInstanceOf(InvalidMailRequestException.class)
                .hasMessageContaining("expected JSON");
        assertThatThrownBy(() -> MailRequest.parse("To: not an address\n\nbody"))
                .isInstanceOf(InvalidMailRequestException.class)
                .hasMessageContaining("Invalid recipient");
        assertThatThrownBy(() -> MailRequest.parse("{\"to\": 42}")).isInstanceOf(InvalidMailRequestException.class);
    }

    @Test
    void derivesTheMessageIdFromTheKey() throws Exception {
        assertThat(SmtpMailGateway.messageId("mail-000042", "example.org")).isEqualTo("<mail-000042@example.org>");
        assertThat(SmtpMailGateway.messageId("order 42/ü", "example.org"))
                .matches("<sha256=[0-9a-f]{64}@example\\.org>");
        assertThat(SmtpMailGateway.messageId("order 42/ü", "example.org"))
                .isEqualTo(SmtpMailGateway.messageId("order 42/ü", "example.org"));
        assertThat(SmtpMailGateway.headerValue("a\r\nBcc: x@example.com"))
                .doesNotContain("\r")
                .doesNotContain("\n");
    }
}
