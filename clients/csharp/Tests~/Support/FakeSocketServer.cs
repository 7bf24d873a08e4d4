// A minimal WebSocket server (RFC 6455, text frames only) for the failure
// modes a real stack does not produce on demand: a heartbeat never
// answered, a PONG saying the registration lapsed, the plain-text
// heartbeat failure. Each test says what the server answers.
using System;
using System.Collections.Generic;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Text;
using System.Threading.Tasks;

namespace Matchmaking.Client.Tests
{
    public sealed class FakeSocketServer : IDisposable
    {
        readonly TcpListener listener;
        readonly List<TcpClient> clients = new List<TcpClient>();
        readonly Action<Session, string> onText;
        bool stopped;

        /// <summary>The paths (with the query) each connection asked for, in order.</summary>
        public readonly List<string> Requests = new List<string>();

        public FakeSocketServer(Action<Session, string> onText)
        {
            this.onText = onText;
            listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            Url = "ws://127.0.0.1:" + ((IPEndPoint)listener.LocalEndpoint).Port;
            Task.Run(AcceptLoop);
        }

        public string Url { get; private set; }

        public int Connections { get { lock (Requests) return Requests.Count; } }

        async Task AcceptLoop()
        {
            while (!stopped)
            {
                TcpClient client;
                try { client = await listener.AcceptTcpClientAsync(); }
                catch (Exception) { return; }
                lock (clients) clients.Add(client);
                new System.Threading.Thread(() => Serve(client)) { IsBackground = true }.Start();
            }
        }

        void Serve(TcpClient client)
        {
            try
            {
                var stream = client.GetStream();
                var head = new StringBuilder();
                while (!head.ToString().EndsWith("\r\n\r\n"))
                {
                    int b = stream.ReadByte();
                    if (b < 0) return;
                    head.Append((char)b);
                }
                var lines = head.ToString().Split(new[] { "\r\n" }, StringSplitOptions.None);
                string key = null;
                foreach (var line in lines)
                    if (line.StartsWith("Sec-WebSocket-Key:", StringComparison.OrdinalIgnoreCase)) key = line.Substring(18).Trim();
                string accept;
                using (var sha = SHA1.Create())
                    accept = Convert.ToBase64String(sha.ComputeHash(Encoding.ASCII.GetBytes(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")));
                var response = Encoding.ASCII.GetBytes("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n");
                stream.Write(response, 0, response.Length);
                lock (Requests) Requests.Add(lines[0].Split(' ')[1]);
                var session = new Session(client, stream);
                while (true)
                {
                    int b0 = stream.ReadByte(), b1 = stream.ReadByte();
                    if (b0 < 0 || b1 < 0) return;
                    long len = b1 & 0x7f;
                    if (len == 126) len = (stream.ReadByte() << 8) | stream.ReadByte();
                    else if (len == 127) { len = 0; for (int i = 0; i < 8; i++) len = (len << 8) | (uint)stream.ReadByte(); }
                    var mask = new byte[4];
                    if ((b1 & 0x80) != 0) ReadExactly(stream, mask);
                    var payload = new byte[len];
                    ReadExactly(stream, payload);
                    if ((b1 & 0x80) != 0) for (int i = 0; i < payload.Length; i++) payload[i] ^= mask[i % 4];
                    int opcode = b0 & 0x0f;
                    if (opcode == 8) return;
                    if (opcode == 1) onText(session, Encoding.UTF8.GetString(payload));
                }
            }
            catch (Exception)
            {
                // The client went away.
            }
        }

        static void ReadExactly(Stream s, byte[] buffer)
        {
            int read = 0;
            while (read < buffer.Length)
            {
                int n = s.Read(buffer, read, buffer.Length - read);
                if (n <= 0) throw new EndOfStreamException();
                read += n;
            }
        }

        /// <summary>Drops every open connection (the server going away for a moment).</summary>
        public void DropAll()
        {
            lock (clients)
            {
                foreach (var c in clients) c.Close();
                clients.Clear();
            }
        }

        public void Dispose()
        {
            stopped = true;
            listener.Stop();
            lock (clients) foreach (var c in clients) c.Close();
        }

        public sealed class Session
        {
            readonly TcpClient client;
            readonly Stream stream;

            public Session(TcpClient client, Stream stream) { this.client = client; this.stream = stream; }

            public void Send(string text)
            {
                var payload = Encoding.UTF8.GetBytes(text);
                var frame = new MemoryStream();
                frame.WriteByte(0x81);
                if (payload.Length < 126) frame.WriteByte((byte)payload.Length);
                else { frame.WriteByte(126); frame.WriteByte((byte)(payload.Length >> 8)); frame.WriteByte((byte)payload.Length); }
                frame.Write(payload, 0, payload.Length);
                lock (stream) stream.Write(frame.ToArray(), 0, (int)frame.Length);
            }

            public void Drop() { client.Close(); }
        }
    }
}
