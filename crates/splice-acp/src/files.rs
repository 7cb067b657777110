//! The editor's files for the file tools: `fs/read_text_file` and `fs/write_text_file` to the
//! client, when it offers them. The tools check paths and take checkpoints first; this only
//! carries the text.

use std::path::PathBuf;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};

use splice_core::bus::{ClientFiles, FilesFuture};

pub(crate) struct EditorFiles {
    pub(crate) cx: ConnectionTo<Client>,
    pub(crate) session_id: String,
    pub(crate) caps: FileSystemCapabilities,
}

impl EditorFiles {
    /// The client's files, when it offers to read or write any.
    pub(crate) fn offered(
        cx: &ConnectionTo<Client>,
        session_id: &str,
        caps: &FileSystemCapabilities,
    ) -> Option<EditorFiles> {
        (caps.read_text_file || caps.write_text_file).then(|| EditorFiles {
            cx: cx.clone(),
            session_id: session_id.to_string(),
            caps: caps.clone(),
        })
    }
}

impl ClientFiles for EditorFiles {
    fn reads(&self) -> bool {
        self.caps.read_text_file
    }

    fn writes(&self) -> bool {
        self.caps.write_text_file
    }

    fn read(&self, path: PathBuf) -> FilesFuture<String> {
        let sent = self
            .cx
            .send_request(ReadTextFileRequest::new(self.session_id.clone(), path));
        Box::pin(async move {
            sent.block_task()
                .await
                .map(|r| r.content)
                .map_err(|e| e.message.clone())
        })
    }

    fn write(&self, path: PathBuf, text: String) -> FilesFuture<()> {
        let sent = self.cx.send_request(WriteTextFileRequest::new(
            self.session_id.clone(),
            path,
            text,
        ));
        Box::pin(async move {
            sent.block_task()
                .await
                .map(drop)
                .map_err(|e| e.message.clone())
        })
    }
}
